/*
 * private.h - the mark for what one source file of the library uses from
 * another without it being API (the API is csrc/include/): hidden, so it is
 * not exported from the shared object and calls to it bind directly, not
 * through the PLT.  Never installed.
 */
#ifndef PYQ_PRIVATE_H
#define PYQ_PRIVATE_H

#define PYQ_PRIVATE __attribute__((visibility("hidden")))

#endif /* PYQ_PRIVATE_H */
