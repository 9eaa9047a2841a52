# The course's commands. Every target bootstraps .venv from pyproject.toml when
# it is missing or older than pyproject.toml (so `git pull` + `make` is enough).

PYTHON ?= python3
VENV   := .venv
# An activated conda environment (not `base`) is used as it is, instead of building a
# second full TensorFlow install in .venv: `conda env create -f environment.yml`,
# `conda activate tfrecord-course`, then `make course`. Force .venv with `make USE_CONDA=`.
USE_CONDA ?= $(if $(CONDA_PREFIX),$(if $(filter base,$(CONDA_DEFAULT_ENV)),,1),)
ifeq ($(USE_CONDA),1)
BIN    := $(CONDA_PREFIX)/bin
STAMP  := $(CONDA_PREFIX)/.tfrecord-course-installed
else
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
endif

# Keep TensorFlow's C++ start-up chatter out of notebooks and test output.
export TF_CPP_MIN_LOG_LEVEL ?= 2
export TF_ENABLE_ONEDNN_OPTS ?= 0
export PYTHONHASHSEED ?= 0

SUBMISSIONS ?= submissions
LESSON      ?= 02
GRADES      ?= build/grades
JOBS        ?= 2

# Running solutions is never a learner's attempt: no progress recorded (make lab leaves it on).
NO_PROGRESS := TFRECORD_COURSE_PROGRESS=off
KERNEL      := tfrecord-course
LAB_DIR     ?= lessons
LAB_ARGS    ?=

.PHONY: help venv course test lint unit nbval lessons lab progress grade bench fixture clean

help:
	@echo "make course   - set up .venv and run every lesson (solutions/) with papermill"
	@echo "make test     - ruff, unit tests, nbval over solutions/, lessons under papermill, grader"
	@echo "make lab      - start JupyterLab on lessons/"
	@echo "make lessons  - regenerate lessons/ from solutions/"
	@echo "make progress - which exercises you have passed"
	@echo "make grade SUBMISSIONS=dir LESSON=NN - grade student notebooks into $(GRADES)"
	@echo "make bench    - converter and pipeline benchmarks (writes bench-results/)"
	@echo "make fixture  - regenerate data/ deterministically"

$(STAMP): pyproject.toml
ifneq ($(USE_CONDA),1)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
endif
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m helpers.notebooks install-kernel
	@touch $(STAMP)

venv: $(STAMP)

course: $(STAMP)
	$(NO_PROGRESS) $(BIN)/python -m helpers.notebooks course --output build/course

lint: $(STAMP)
	$(BIN)/ruff check helpers tests
	$(BIN)/ruff format --check helpers tests

# One process: `pytest -n 2` (pytest-xdist) was measured 1.8x slower on the 2-core CI machine
# (each worker starts its own TensorFlow), so the course does not use it.
unit: $(STAMP)
	$(NO_PROGRESS) $(BIN)/python -m pytest tests -q -p no:cacheprovider

nbval: $(STAMP)
	@if ls solutions/*.ipynb >/dev/null 2>&1; then \
	  $(NO_PROGRESS) $(BIN)/python -m pytest -q -p no:cacheprovider --nbval solutions/ \
	    --nbval-kernel-name $(KERNEL) --nbval-sanitize-with .nbval-sanitize.cfg \
	    --nbval-cell-timeout=300; \
	else echo "no solution notebooks yet"; fi

test: lint unit nbval

lessons: $(STAMP)
	$(BIN)/python -m helpers.notebooks lessons

lab: $(STAMP)
	$(BIN)/jupyter lab $(LAB_DIR) $(LAB_ARGS)

progress: $(STAMP)
	@$(BIN)/python -m helpers.exercises progress

grade: $(STAMP)  # sandboxed (bubblewrap) unless GRADE_FLAGS=--no-sandbox
	$(BIN)/python -m helpers.grading --lesson $(LESSON) --submissions $(SUBMISSIONS) --output $(GRADES) --jobs $(JOBS) $(GRADE_FLAGS)

bench: $(STAMP)
	$(BIN)/python -m helpers.bench --output bench-results

fixture: $(STAMP)
	$(BIN)/python -m helpers.fixture --output data

clean:
	rm -rf build bench-results .pytest_cache
