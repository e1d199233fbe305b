// Included first by every header in steps/: the steps use the engine, never the other way
// round, so the engine's library (built with DIAGNOSE_ENGINE_LAYER) cannot include them.
#pragma once

#ifdef DIAGNOSE_ENGINE_LAYER
#error \
    "a steps/ header included from the engine layer: the engine knows step kinds only through orchestrator/engine/step_registry.h"
#endif
