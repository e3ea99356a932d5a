package domain

import "testing"

// TestJobAccepts is the convergence rule (docs/jobs.md "Convergence"),
// case by case.
func TestJobAccepts(t *testing.T) {
	w1 := func(s JobStatus, seq int64) StateReport { return StateReport{Status: s, WorkerID: "w1", Seq: seq} }
	control := func(s JobStatus) StateReport { return StateReport{Status: s, Control: true} }
	job := func(s JobStatus, worker string, seq int64, by FinalSource) Job {
		return Job{Status: s, WorkerID: worker, StateSeq: seq, FinalBy: by}
	}
	for _, tc := range []struct {
		name string
		job  Job
		r    StateReport
		want bool
	}{
		{"claimed job runs", job(JobStarted, "w1", 0, ""), w1(JobRunning, 1), true},
		{"running job succeeds", job(JobRunning, "w1", 1, ""), w1(JobSuccess, 2), true},
		{"started job succeeds (running event lost or late)", job(JobStarted, "w1", 0, ""), w1(JobSuccess, 2), true},
		{"pending job succeeds (its claim and running rows land later)", job(JobPending, "", 0, ""), w1(JobSuccess, 2), true},
		{"pending job fails by a worker", job(JobPending, "", 0, ""), w1(JobFailed, 2), true},
		{"running after success", job(JobSuccess, "w1", 2, FinalByWorker), w1(JobRunning, 1), false},
		{"redelivered final", job(JobSuccess, "w1", 2, FinalByWorker), w1(JobSuccess, 2), false},
		{"unnumbered final after a worker final", job(JobFailed, "w1", 0, FinalByWorker), w1(JobSuccess, 0), false},
		{"stale running by seq", job(JobRunning, "w1", 1, ""), w1(JobRunning, 1), false},
		{"unnumbered running moves started forward", job(JobStarted, "w1", 0, ""), w1(JobRunning, 0), true},
		{"never backwards", job(JobRunning, "w1", 0, ""), w1(JobStarted, 0), false},
		{"another worker's report", job(JobRunning, "w1", 1, ""), StateReport{Status: JobSuccess, WorkerID: "w2", Seq: 2}, false},
		{"worker final replaces the reaper's verdict", job(JobFailed, "w1", 1, FinalByControl), w1(JobSuccess, 2), true},
		{"worker final replaces an unanswered abort", job(JobAborted, "w1", 1, FinalByControl), w1(JobSuccess, 2), true},
		{"worker running does not revive a job the reaper failed", job(JobFailed, "w1", 0, FinalByControl), w1(JobRunning, 1), false},
		{"reaper fails an active job", job(JobRunning, "w1", 1, ""), control(JobFailed), true},
		{"reaper fails a pending job", job(JobPending, "", 0, ""), control(JobFailed), true},
		{"reaper never replaces a worker final", job(JobSuccess, "w1", 2, FinalByWorker), control(JobFailed), false},
		{"control never replaces a control final", job(JobFailed, "", 0, FinalByControl), control(JobAborted), false},
		{"rows finished before final_by existed stay", job(JobFailed, "w1", 0, ""), w1(JobSuccess, 2), false},
		{"no report sets pending", job(JobStarted, "w1", 0, ""), w1(JobPending, 3), false},
		{"no report sets blocked", job(JobStarted, "w1", 0, ""), w1(JobBlocked, 3), false},
		{"unknown status", job(JobStarted, "w1", 0, ""), w1("weird", 3), false},
		{"control never moves a job to running", job(JobStarted, "w1", 0, ""), control(JobRunning), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.job.Accepts(tc.r); got != tc.want {
				t.Fatalf("%+v accepts %+v = %v, want %v", tc.job, tc.r, got, tc.want)
			}
		})
	}
}
