/*
 * libcollsim.c - the shared library's own translation unit, which holds
 * nothing: libcollsim.so is the engine's static parts (window, sim,
 * collectives, run) linked whole, with only the symbols of
 * dist/collsim.sym exported. CMake needs one source per library.
 */
typedef int cs__libcollsim_unit_t;
