// SPDX-License-Identifier: Apache-2.0
/* A small pool of worker threads that persists for a model's life: okpu_workers_run hands tasks 0..n-1 to the
 * workers and the calling thread (worker 0) and returns when all are done. No thread is created and nothing is
 * allocated per run. Built with POSIX threads where the build defines OKPU_HAVE_PTHREADS (setup.py, the Makefile's
 * host builds); everywhere else (the rv64 cross build, the K210 board, MicroPython ports) the pool has one worker and
 * runs the tasks in order on the caller. A process forked while a pool exists runs that pool's tasks on the caller
 * too (the child has none of the parent's threads). */
#ifndef OKPU_CORE_WORKERS_H
#define OKPU_CORE_WORKERS_H

#include <stdint.h>

#include "../okpu.h"

#define OKPU_WORKERS_MAX 64 /* more threads than this are refused at create: no real model splits that finely */

typedef struct okpu_workers okpu_workers;

/* One task: `worker` (0..count-1) says whose buffers to use; two tasks of one run never share a worker at the same
 * time. */
typedef void (*okpu_task_fn)(void *ctx, int worker, uint32_t task);

/* What threads = 0 means: the processors online (sysconf(_SC_NPROCESSORS_ONLN)) in a POSIX-thread build, capped at
 * OKPU_WORKERS_MAX; 1 in a serial build. */
int okpu_workers_default_count(void);

/* count: 0 = okpu_workers_default_count(); 1..OKPU_WORKERS_MAX; a serial build makes a pool of one whatever count
 * says. NULL with err filled when count is out of range or memory / a thread could not be had. */
okpu_workers *okpu_workers_create(int count, const okpu_allocator *alloc, okpu_error *err);
int okpu_workers_count(const okpu_workers *w); /* 1 for NULL */
/* Run fn(ctx, worker, task) for task = 0..n_tasks-1 (w NULL: serially on the caller). Each task goes to whichever
 * worker is free (the caller takes them from the front, the others from the back), so the caller must not depend on
 * which worker runs which task. Not reentrant: one run at a time per pool (a model runs one forward pass at a time). */
void okpu_workers_run(okpu_workers *w, uint32_t n_tasks, okpu_task_fn fn, void *ctx);
/* Time every task from now on with `now` (the clock of okpu_model_run_timed; NULL: stop timing, the counts kept),
 * the counts starting from 0: what a profile uses to tell the work a split adds (tasks that take longer on several
 * threads: data read from another processor's cache) from the time threads spend outside tasks (waiting at joins,
 * serial steps). Call between runs; nothing for NULL. Two clock reads a task: about 40 ns together on a Linux PC. */
void okpu_workers_time_tasks(okpu_workers *w, okpu_clock_fn now, void *clock_ctx);
/* The nanoseconds every thread of the pool spent inside tasks since timing last started, summed (0 for NULL or a pool
 * never timed). Call between runs. */
uint64_t okpu_workers_task_ns(const okpu_workers *w);
/* on != 0: every run from now on goes to the calling thread alone, as in a pool of one, though the pool's count, and
 * so the way callers split their work, stay (0: back to sharing). What a profile uses to time the work of an N-way
 * split without N threads running at once: over the one-thread figure, the split itself costs work (smaller tasks,
 * set-ups repeated per task); the rest of an N-thread loss is the threads' concurrency (caches, joins, the machine).
 * Call between runs; nothing for NULL. */
void okpu_workers_caller_only(okpu_workers *w, int on);
/* Wake sleeping workers without giving them work and return at once: they watch for the next run as after one, so
 * a forward pass that starts with serial steps finds them awake at its first split (a futex wake-up takes tens of
 * microseconds in a virtual machine). */
void okpu_workers_wake(okpu_workers *w);
/* Cut n items, `quantum` a unit (the last unit ends at n), into runs for `workers` threads taking tasks as
 * okpu_workers_run hands them out, from both ends: runs that shrink toward the middle of the range, where the threads
 * meet, so that the last tasks of a run are small and the thread that finds none left waits little for the others
 * (OpenMP's guided schedule, from both ends): from each end, one 2 x workers-th of the units left, down to one unit
 * (one worker: one run). cut[r] is run r's first item and cut[runs] = n. Returns the run count (>= 1 for n >= 1), or
 * 0 when n is 0, quantum 0, workers outside 1..OKPU_WORKERS_MAX, or the runs would number more than max_runs (cut
 * has max_runs + 1 entries). */
uint32_t okpu_workers_taper(uint32_t n, uint32_t quantum, int workers, uint32_t max_runs, uint32_t *cut);
void okpu_workers_destroy(okpu_workers *w);

/* How long a cache line takes to go from one processor to another and back, in nanoseconds: the best of several
 * trials of a ping-pong between the calling thread and a thread started for it, each pinned (Linux) to one of the
 * first two processors this process may use; the caller's own processor set is put back before it returns. -1 where
 * it cannot be measured: a serial build, fewer than two processors, no thread, or the other thread not answering
 * within a second. The pool does not use it: the benchmark does, to tell a virtual machine whose host has put its two
 * processors far apart (on the README's EPYC 75-95 ns near, 350-440 ns far; every split of a forward pass then
 * costs more, and the two-thread column loses a quarter) from one whose processors sit as usual. */
long okpu_workers_round_trip_ns(void);

#endif
