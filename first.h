/* Included first by every .c of the project: config.h and feature macros. */
#ifndef FSD_FIRST_H
#define FSD_FIRST_H
#include "config.h"
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#endif
