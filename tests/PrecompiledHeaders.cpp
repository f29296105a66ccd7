// The source of the target that holds the tests' precompiled headers
// (tests/CMakeLists.txt, strata_test_pch): CMake makes a target's headers
// only for a target with a source; the object it makes is linked into nothing.
