#include "job_functions.h"

std::string FromExtraLibrary(std::string s) { return "extra:" + s; }
ORB_REMOTE(FromExtraLibrary);
