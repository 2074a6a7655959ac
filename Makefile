# sqlite_shard_fdw: PGXS build, plus the project's own entry points.
#
#   make demo    install what is missing, build, install, run the sample fleet
#                (KEEP=1: leave the cluster and the fleet running, and say how
#                to connect; KEEP reaches test/demo.sh through the environment)
#   make test    install what is missing, build with -Werror, run every suite
#   make bench   the benchmark (see docs/performance.md)

EXTENSION = sqlite_shard_fdw
MODULE_big = sqlite_shard_fdw
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))
DATA = sqlite_shard_fdw--0.1.0.sql
PGFILEDESC = "sqlite_shard_fdw - foreign data wrapper for tenant-sharded SQLite fleets"

PG_CPPFLAGS = -Isrc -Isrc/sqlite -Isrc/exec
SHLIB_LINK = -lsqlite3 -lpthread
# Each object also depends on the headers it includes (src/*.d, written as
# it compiles), so that a changed header rebuilds what includes it; the
# bitcode for JIT inlining is made again when any header changes.
PG_CFLAGS = -MMD -MP
EXTRA_CLEAN = $(OBJS:.o=.d)
ifeq ($(WERROR),1)
PG_CFLAGS += -Wall -Werror
endif

PG_CONFIG ?= pg_config

# PGXS is only there once postgresql-server-dev is installed; the entry
# points below install it first and then call make again.
PGXS := $(wildcard $(shell $(PG_CONFIG) --pgxs 2>/dev/null))
ifneq ($(PGXS),)
include $(PGXS)
-include $(OBJS:.o=.d)
$(OBJS:.o=.bc): $(wildcard src/*.h src/*/*.h)
endif

.PHONY: test demo bench deps

deps:
	bash test/deps.sh

test:
	bash test/run_tests.sh

demo:
	bash test/demo.sh

bench:
	bash test/bench.sh
