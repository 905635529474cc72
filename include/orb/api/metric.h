// Where a Ray program includes <ray/api/metric.h>: the same metrics (see <orb/metric.h>).
#pragma once

#include "orb/metric.h"
