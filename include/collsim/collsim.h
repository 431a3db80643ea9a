/*
 * collsim/collsim.h - the whole public C API of collsim in one include:
 * the device API (collsim/device.h), a collective of your own and how to
 * load and run it (collsim/collective.h), and the library's version.
 * Link with `pkg-config --libs collsim` (or find_package(collsim) and the
 * target collsim::collsim). The manual page collsim-api(3) is the same
 * contract in prose.
 */
#ifndef COLLSIM_H
#define COLLSIM_H

#include "collective.h"
#include "device.h"
#include "types.h"
#include "version.h"

#endif
