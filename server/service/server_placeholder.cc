#include "server/service/server.h"
