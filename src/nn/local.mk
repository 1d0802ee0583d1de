# src/nn/local.mk -- the model container and the built-in layers (included by Makefile.am).
libzero_la_SOURCES += \
	%reldir%/model.c \
	%reldir%/nn_error.c \
	%reldir%/operand.c \
	%reldir%/matmul.c \
	%reldir%/activation.c \
	%reldir%/linear.c \
	%reldir%/gelu.c \
	%reldir%/mlp_block.c \
	%reldir%/classifier.c \
	%reldir%/mlp_model.c
noinst_HEADERS += %reldir%/nn_internal.h
zeroinclude_HEADERS += include/zero/model.h include/zero/nn.h
# GPT-2: embeddings, LayerNorm, causal self-attention, the transformer block, the tied head
libzero_la_SOURCES += \
	%reldir%/gpt_unit.c \
	%reldir%/conv1d.c \
	%reldir%/layernorm.c \
	%reldir%/attention.c \
	%reldir%/gpt_block.c \
	%reldir%/embedding.c \
	%reldir%/gpt_head.c \
	%reldir%/gpt_model.c
noinst_HEADERS += %reldir%/gpt_internal.h
zeroinclude_HEADERS += include/zero/gpt.h
# Llama: RMSNorm, rotary embedding, grouped-query attention, SwiGLU (zero/llama.h)
libzero_la_SOURCES += \
	%reldir%/llama_config.c \
	%reldir%/llama_tensors.c \
	%reldir%/rmsnorm.c \
	%reldir%/llama_block.c \
	%reldir%/llama_model.c
noinst_HEADERS += %reldir%/llama_internal.h
zeroinclude_HEADERS += include/zero/llama_config.h include/zero/llama.h
