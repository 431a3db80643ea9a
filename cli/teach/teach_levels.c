/*
 * teach_levels.c - the break-it levels' table (teach_levels.h): what each
 * level takes away, in what world, and what the learner is told of it.
 */
#include "teach_levels.h"

#include "../../sim/trace/check.h"

static const teach_level_t levels[] = {
  {"ring-no-ready-barrier", "ring", 3, 6, CS_MM_SC,
   {"no READY barrier: let a rank load from its left before it stored",
    "the READY barrier: a rank loads from its left only after the left rank "
    "stored and notified (store -> notify -> wait -> load)",
    CS_CHECK_RACE, CS_CHECK_NO_SIGNAL, 0, 0, "the READY barrier",
    "The ring passes partial sums to the right: each round a rank loads a "
    "segment from its left neighbour, adds its own input and stores the sum "
    "for its right neighbour to load. Before it loads, it waits at the READY "
    "barrier until the left rank has stored that segment and said so. This "
    "ring has no READY barrier.", NULL, NULL}},
  {"no-fence-before-notify", "ring", 3, 6, CS_MM_RELAXED,
   {"no fence: land a notify (DMA engine) before the store it announces",
    "the fence before the notify: a rank's stores land before its notify "
    "does (store -> fence -> notify -> wait -> load)",
    CS_CHECK_RACE, CS_CHECK_NO_FENCE, 0, 0, "the fence before the notify",
    "On the device a store and a notify are posted to a DMA engine and land "
    "later, in any order: this run uses the relaxed model, where you land "
    "them (the rank's DMA engine is an actor). A fence before the notify "
    "makes the store land first. This ring notifies without it.", NULL,
    NULL}},
  {"mesh-no-chunk-barrier", "mesh", 3, 6, CS_MM_SC,
   {"no read-complete barrier: store a sum while a peer still reads",
    "the read-complete barrier: a rank stores its sum only after every "
    "reader notified it had read (load -> notify -> wait -> store)",
    CS_CHECK_RACE, CS_CHECK_NO_READ_DONE, 0, 0, "the read-complete barrier",
    "In this mesh every rank loads the whole chunk from every peer, sums, "
    "and stores the sum over its own copy of the chunk. Before it stores, "
    "it waits until every peer has said it has read that copy: a peer still "
    "loading it would read a sum where it expects an input. This mesh does "
    "not wait.", NULL, NULL}},
  {"wait-eq", "mesh", 2, 6, CS_MM_SC,
   {"waits compare ==: push a cell past the value a wait wants",
    "waits with >=: the notifies only add, so a cell may pass the value an "
    "== wait needs",
    CS_CHECK_WAIT_EQ, 0, 0, 0, "a wait with ==",
    "Notifies add 1 to a counter cell; a wait blocks until the cell reaches "
    "its target. These waits ask for the exact value (==): a fast peer that "
    "adds again before the waiter looks has pushed the cell past it.",
    NULL, NULL}},
  {"drain-no-ddr-fence", "ring", 3, 6, CS_MM_A2A3,
   {"drain but no DDR fence: let a notify be seen before its drained store",
    "the DDR fence after the pipe barrier: a drained store is visible to "
    "the peers before the notify that announces it",
    CS_CHECK_RACE, CS_CHECK_NO_FENCE, 0, 0, "the DDR fence (on the device)",
    "On the device (the a2a3 model) a fence is two steps: the pipe barrier "
    "drains a rank's stores into the memory system, and a DDR fence waits "
    "until another chip can see them. A compiler once emitted only the "
    "drain before a notify: it passed every simulator run and gave stale "
    "rows on silicon. This ring drains and notifies, with no DDR fence.",
    "PTOAS #744, fixed by #757", NULL}},
  {"host-push-no-tail-drain", "host-push", 2, 2, CS_MM_A2A3,
   {"no drain after a put: let the neighbour load before the put lands",
    "the pipe barrier after the put: it drains the put, so the DDR fence "
    "before the notify waits until the put is visible (put -> pipe barrier "
    "-> DDR fence -> notify -> wait -> load)",
    CS_CHECK_RACE, CS_CHECK_NO_FENCE, 0, 0, "the pipe barrier after a put",
    "The host push ring adds a chunk into its right neighbour's window "
    "with puts, a tile each, then notifies it; the neighbour then pushes "
    "the summed chunk on. On the device (a2a3) a put waits in the DMA pipe "
    "until a pipe barrier drains it, and a DDR fence makes visible only "
    "what was drained. A compiler once left out the pipe barrier after a "
    "chunked put's last tile: the DDR fence before the notify left that "
    "tile behind, and the neighbour pushed the chunk on without it. This "
    "ring has the DDR fence, and no pipe barrier after a chunk's last put.",
    "PTOAS #872, PyPTO drains every put", NULL}},
};
enum { NLEVELS = sizeof(levels) / sizeof(levels[0]) };

uint32_t tv_nlevels(void)
{
  return NLEVELS;
}

const teach_level_t *tv_level(uint32_t v)
{
  return &levels[v - 1];
}

uint32_t tv_find(uint32_t kind, uint32_t cause)
{
  for (uint32_t i = 0; i < NLEVELS; i++)
    if (levels[i].l.kind == kind && levels[i].l.cause == cause)
      return i + 1;
  return 0;
}
