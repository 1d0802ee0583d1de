/* libzero: ZeRO, the Zero Redundancy Optimizer, in C. One include for users. */
#ifndef ZERO_ZERO_H
#define ZERO_ZERO_H

#include "zero/error.h"
#include "zero/size.h"
#include "zero/dtype.h"
#include "zero/ledger.h"
#include "zero/comm_stats.h"
#include "zero/backend.h"
#include "zero/layout.h"
#include "zero/model.h"
#include "zero/nn.h"
#include "zero/config.h"
#include "zero/config_json.h"
#include "zero/events.h"
#include "zero/engine.h"
#include "zero/atom.h"
#include "zero/synthetic.h"
#include "zero/safetensors.h"
#include "zero/estimate.h"
#include "zero/trace.h"
#include "zero/checkpoint.h"
#include "zero/gpt.h"
#include "zero/llama.h"
#include "zero/hf_model.h"
#include "zero/tokens.h"
#include "zero/addition.h"
#include "zero/job.h"

#endif
