#ifndef SPLASH_CRDKAFKA_SHIM_H
#define SPLASH_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#endif
