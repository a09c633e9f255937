# Two commands do all the set-up on a fresh machine:
#   make run    the main end-to-end job: the lab (prmkit lab run, default preset, one seed)
#   make test   the whole test suite (what CI runs)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run demo test test-quick bench venv clean

$(VENV)/.installed: pyproject.toml scripts/bootstrap.sh
	bash scripts/bootstrap.sh $(VENV)
	touch $@

venv: $(VENV)/.installed

run: venv
	$(VENV)/bin/prmkit lab run --preset default --seeds 0 --out runs/lab-default

demo: venv
	bash scripts/demo.sh

test: venv
	bash scripts/test.sh

test-quick: venv
	$(PY) -m pytest -n 2 -m "not slow" -q tests prmkit

bench: venv
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) runs/demo runs/lab-default
