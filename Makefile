# The two commands of the quick start. Each sets up what it needs first.
PYTHON ?= python3
VENV := .venv
# Debian's headless Chromium and its driver, for the HTML report's browser tests.
CHROMIUM := /usr/bin/chromium /usr/bin/chromedriver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint clean

$(VENV)/.installed-%: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[$*]"
	touch $@

$(CHROMIUM):
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver

demo: $(VENV)/.installed-plot  ## set up, then train, evaluate and explain on the bundled data
	$(VENV)/bin/rebelboost demo

test: $(VENV)/.installed-dev,plot $(CHROMIUM)  ## set up, then run the test suite
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -q

clean:
	rm -rf $(VENV) demo-output .pytest_cache
