# The queue as a C library, for C programs: the queue core of csrc/
# behind the public header csrc/include/pyqueue.h; no Python involved.  The
# Python package builds its own copy (pip install .); this is for C.
#
#   make [lib]        $(BUILD)/libpyqueue.a and $(BUILD)/libpyqueue.so
#   make example      $(BUILD)/two_threads from examples/c/two_threads.c, then runs it
#   make install      PREFIX (default /usr/local): include/pyqueue.h (+ pyqueue_inline.h), lib/libpyqueue.{a,so}
#   make clean
#
# Link a program with:  cc -Icsrc/include prog.c build/clib/libpyqueue.a -pthread
CC ?= cc
AR ?= ar
BUILD ?= build/clib
PREFIX ?= /usr/local
# The flags of the Python build (pyqueue/_build.py), position-independent for the .so.
CFLAGS ?= -O2
PYQ_CFLAGS := -std=gnu11 -pthread -fno-strict-aliasing -fno-semantic-interposition -fPIC \
              -Wall -Wextra -Wno-unused-parameter -Icsrc/include -Icsrc
# The queue core (csrc/core/ and what it uses of csrc/common/): everything
# pyqueue.h declares, and nothing of the lab.
include csrc/layers.mk
OBJS := $(PYQ_CORE:%.c=$(BUILD)/%.o)
HDRS := $(wildcard csrc/include/*.h csrc/common/*.h csrc/core/*.h)

.PHONY: lib example install clean
lib: $(BUILD)/libpyqueue.a $(BUILD)/libpyqueue.so

$(BUILD)/%.o: csrc/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PYQ_CFLAGS) -c -o $@ $<

$(BUILD)/libpyqueue.a: $(OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/libpyqueue.so: $(OBJS)
	$(CC) -shared -pthread -o $@ $^

$(BUILD)/two_threads: examples/c/two_threads.c $(BUILD)/libpyqueue.a
	$(CC) $(CFLAGS) -std=gnu11 -Wall -Wextra -Icsrc/include -o $@ $< $(BUILD)/libpyqueue.a -pthread

example: $(BUILD)/two_threads
	$(BUILD)/two_threads

install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib
	install -m 644 csrc/include/pyqueue.h csrc/include/pyqueue_inline.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libpyqueue.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libpyqueue.so $(DESTDIR)$(PREFIX)/lib/

clean:
	rm -rf $(BUILD)
