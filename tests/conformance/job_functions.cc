#include "job_functions.h"

std::string FromJobLibrary(std::string s) { return "job:" + s; }
ORB_REMOTE(FromJobLibrary);
