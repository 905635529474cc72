// Remote functions of the job's code_search_path library (job_functions) and of a
// library only some tasks load (extra_functions, through their runtime environment).
#pragma once

#include <orb/api.h>

#include <string>

std::string FromJobLibrary(std::string s);
std::string FromExtraLibrary(std::string s);
