# fibril/lookup.mk: the lookup engine (lk_*), its tests, example and bench.
fibrilinclude_HEADERS += fibril/include/fibril/lookup.h
