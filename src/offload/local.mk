# src/offload/local.mk -- ZeRO-Offload (host optimizer states) and ZeRO-Infinity (NVMe).
libzero_la_SOURCES += %reldir%/offload.c %reldir%/aio.c %reldir%/nvme_swap.c
noinst_HEADERS += %reldir%/aio.h %reldir%/nvme_swap.h %reldir%/offload.h
