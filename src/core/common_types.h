// Protobuf types the core worker uses internally (never in public headers).
#pragma once

#include "common.pb.h"
