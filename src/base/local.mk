# src/base/local.mk -- what every layer and every backend may use (nothing here includes engine/).

# status codes and messages, checked sizes, files replaced safely, the backend registry
libzero_la_SOURCES += \
	%reldir%/error.c \
	%reldir%/size.c \
	%reldir%/file_replace.c \
	%reldir%/registry.c \
	%reldir%/backend_check.c \
	%reldir%/knobs.c
noinst_HEADERS += %reldir%/file_replace.h
# the interface's contract checks, written once for every backend
libzero_la_SOURCES += %reldir%/backend_contract.c
noinst_HEADERS += %reldir%/backend_contract.h
zeroinclude_HEADERS += include/zero/error.h include/zero/size.h include/zero/backend.h \
	include/zero/knobs.h
# the backend table's optional groups, one header each
zeroinclude_HEADERS += include/zero/backend_fused.h include/zero/backend_classifier.h include/zero/backend_bf16_dot.h \
	include/zero/backend_stored.h include/zero/backend_attention.h \
	include/zero/backend_device_step.h include/zero/backend_groups.h \
	include/zero/backend_quant.h

# fault injection (ZERO_FAULT): any fallible point fails on chosen ranks (docs/faults.md)
libzero_la_SOURCES += %reldir%/fault.c
zeroinclude_HEADERS += include/zero/fault.h

# dtypes, conversions, the shard layout
libzero_la_SOURCES += %reldir%/dtype.c %reldir%/layout.c
noinst_HEADERS += %reldir%/dtype_convert.h %reldir%/bf16_dot.h %reldir%/bf16_tile.h %reldir%/quant_int8.h %reldir%/quant_int4.h
# the Llama kernels' shared elementwise math (cpu and cuda)
noinst_HEADERS += %reldir%/llama_math.h
zeroinclude_HEADERS += include/zero/backend_llama.h
zeroinclude_HEADERS += include/zero/dtype.h include/zero/layout.h

# the exactness contract's pieces: the fixed-order sum tree, libm-free math (docs/exactness.md)
libzero_la_SOURCES += %reldir%/tree.c
noinst_HEADERS += %reldir%/tree.h %reldir%/exact_math.h

# the host's threads and the Adam kernel shared by the cpu backend and the offloaded optimizer
libzero_la_SOURCES += %reldir%/host_parallel.c %reldir%/host_isa.c %reldir%/host_optim.c %reldir%/optim_consts.c
noinst_HEADERS += %reldir%/host_parallel.h %reldir%/host_isa.h %reldir%/host_optim.h %reldir%/optim_consts.h

# the memory ledger: every backend's allocations and the registry's device counted by tag
libzero_la_SOURCES += %reldir%/ledger.c
zeroinclude_HEADERS += include/zero/ledger.h

# CRC-32C for checkpoint shards and NVMe swap files
libzero_la_SOURCES += %reldir%/crc32c.c
noinst_HEADERS += %reldir%/crc32c.h
