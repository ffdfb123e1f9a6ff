# fibril/lookup.mk: the lookup engine (lk_*), its tests, example and bench.
fibrilinclude_HEADERS += fibril/include/fibril/lookup.h
fibril_libfibril_la_SOURCES += \
	fibril/lookup_int.h \
	fibril/lookup_root.c \
	fibril/lookup_flight.c \
	fibril/lookup_sort.c \
	fibril/lookup_scan.c
