/*
 * slurm.h -- the little of Slurm that `pkb sweep --slurm` needs, through
 * its own commands (sbatch, scontrol, sacct, squeue), never a library or a
 * scheduler of our own: submit a job array, and read back the state of its
 * tasks.
 */
#ifndef PKB_SLURM_H
#define PKB_SLURM_H

#include <jansson.h>
#include <stddef.h>

/* The value of an sbatch option as pkb passes it on (partition, account,
 * time): letters, digits and _.,:@+- only, so that it stays one word of a
 * #SBATCH line. -1 with an error naming `what` otherwise. */
int slurm_check_word(const char *what, const char *v);

/* sbatch --parsable --array=ARRAY SCRIPT (the script holds every other
 * option as #SBATCH lines); the job id into jobid. `log` keeps sbatch's
 * output. -1 with an error (sbatch's own message) when it refused. */
int slurm_submit(const char *script, const char *array, const char *log, char *jobid, size_t n);

/* The tasks of array job `jobid` as Slurm sees them: an array of
 * {"task": "3" or a pending range "1-3", "state": "COMPLETED", "exit_code":
 * "0:0", "reason": ...}, from scontrol (jobs Slurm still holds), else
 * sacct (the accounting database, when there is one). An empty array when
 * neither knows the job any more; `log` is a scratch file. */
json_t *slurm_tasks(const char *jobid, const char *log);

/* a state in which a task still holds, or will hold, its shard */
int slurm_state_active(const char *state);

#endif
