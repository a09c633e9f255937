# Two commands do all the set-up on a fresh machine:
#   make run    the main end-to-end job: the lab (prmkit lab run, default preset, one seed)
#   make test   the whole test suite (what CI runs)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run demo test test-quick bench docs venv clean

$(VENV)/.installed: pyproject.toml scripts/bootstrap.sh
	bash scripts/bootstrap.sh $(VENV)
	touch $@

# KaTeX for the labelling app (prmkit label serve): npm ci in prmkit/label when its lock is newer than the
# last install; where npm is missing this warns, and warns again on the next make, until it is installed
KATEX_STAMP := prmkit/label/node_modules/.prmkit-lock
$(KATEX_STAMP): prmkit/label/package-lock.json
	bash scripts/bootstrap.sh --katex

venv: $(VENV)/.installed $(KATEX_STAMP)

run: venv
	$(VENV)/bin/prmkit lab run --preset default --seeds 0 --out-dir runs/lab-default

demo: venv
	bash scripts/demo.sh

test: venv
	bash scripts/test.sh

test-quick: venv
	$(PY) -m pytest -n 2 -m "not slow" -q tests prmkit

bench: venv
	$(PY) bench/run_all.py

# the documentation site (mkdocs.yml) into site/: the guides of docs/ and the API reference from the docstrings
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) runs/demo runs/lab-default site
