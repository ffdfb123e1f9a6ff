# contrib/contrib.mk: owned by its folder's work; appends to the variables of Makefile.am
