// The one Catch2 main() that every unit test links.
#define CATCH_CONFIG_MAIN
#include "catch2/catch.hpp"
