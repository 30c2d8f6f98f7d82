# The two commands of the quick start. Each sets up its own virtual environment first.
PYTHON ?= python3
VENV := .venv

.PHONY: demo test lint clean

$(VENV)/.installed-%: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[$*]"
	touch $@

demo: $(VENV)/.installed-plot  ## set up, then train, evaluate and explain on the bundled data
	$(VENV)/bin/rebelboost demo

test: $(VENV)/.installed-dev,plot  ## set up, then run the test suite
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -q

clean:
	rm -rf $(VENV) demo-output .pytest_cache
