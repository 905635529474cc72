#pragma once
#include <string>
int Square(int x);
std::string Shout(std::string s);
