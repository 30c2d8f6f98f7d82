# The two commands of the quick start. Each sets up what it needs first.
PYTHON ?= python3
VENV := .venv
# Debian's headless Chromium and its driver, for the HTML report's browser tests.
CHROMIUM := /usr/bin/chromium /usr/bin/chromedriver
BROWSER_PACKAGES := chromium chromium-driver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get
APT_LOG := $(or $(TMPDIR),/tmp)/rebelboost-apt.log

.PHONY: demo test lint clean

$(VENV)/.installed-%: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[$*]"
	touch $@

# Installs the two packages and the dependencies they lack, without recommended packages; stops
# instead if that would upgrade a package already installed. apt's output goes to $(APT_LOG).
$(CHROMIUM):
	@echo "The browser tests need $(BROWSER_PACKAGES); installing them with apt-get."
	@$(APT) update -qq > $(APT_LOG) 2>&1 || { cat $(APT_LOG); exit 1; }
	@plan=$$($(APT) install --simulate --no-install-recommends $(BROWSER_PACKAGES)) \
	  || { echo "$$plan"; exit 1; }; \
	upgrades=$$(echo "$$plan" | awk '/^Inst [^ ]+ \[/ {print $$2}' | tr '\n' ' '); \
	if [ -n "$$upgrades" ]; then \
	  echo "Stopped: $(BROWSER_PACKAGES) would upgrade installed packages: $$upgrades"; \
	  echo "Install them yourself if that is fine:" \
	    "apt-get install --no-install-recommends $(BROWSER_PACKAGES)"; \
	  exit 1; \
	fi; \
	echo "Installing:" $$(echo "$$plan" | awk '/^Inst / {print $$2}')
	@$(APT) install -y -qq --no-install-recommends $(BROWSER_PACKAGES) >> $(APT_LOG) 2>&1 \
	  || { tail -20 $(APT_LOG); exit 1; }
	@echo "Installed (apt's output: $(APT_LOG))."

demo: $(VENV)/.installed-plot  ## set up, then train, evaluate and explain on the bundled data
	$(VENV)/bin/rebelboost demo

# Two pytest processes (pytest-xdist), one a core here: numba's first compilations and the
# tests' Python share the cores instead of one waiting on the other. TEST_PROCESSES=0 runs
# the suite in this process.
TEST_PROCESSES ?= 2

test: $(VENV)/.installed-dev,plot $(CHROMIUM)  ## set up, then run the test suite
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -q -n $(TEST_PROCESSES)

clean:
	rm -rf $(VENV) demo-output .pytest_cache
