// Remote functions in a shared library, loaded by workers from code_search_path.
#include "remote_functions.h"

#include <orb/api.h>

int Square(int x) { return x * x; }
std::string Shout(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s + "!";
}
ORB_REMOTE(Square, Shout);
