package domain

import "testing"

// FuzzJobAccepts: the convergence rule never panics and keeps its
// promises for any stored state and report: nothing sets pending or
// blocked; the control plane never replaces a final state; no report
// moves an active job backwards or revives a final one; a numbered report
// not newer than the last applied is refused; and a worker's final report
// (newer, from the job's worker) always applies to an active job.
func FuzzJobAccepts(f *testing.F) {
	f.Add("running", "w1", int64(1), "", "success", "w1", int64(2), false)
	f.Add("failed", "w1", int64(0), "control", "success", "w1", int64(2), false)
	f.Add("pending", "", int64(0), "", "failed", "", int64(0), true)
	f.Fuzz(func(t *testing.T, status, worker string, seq int64, by, to, rworker string, rseq int64, control bool) {
		j := Job{Status: JobStatus(status), WorkerID: worker, StateSeq: seq, FinalBy: FinalSource(by)}
		r := StateReport{Status: JobStatus(to), WorkerID: rworker, Seq: rseq, Control: control}
		ok := j.Accepts(r)
		switch {
		case !ok:
			if r.Status.Terminal() && r.Status != JobBlocked && !control && j.Status.Active() &&
				(worker == "" || rworker == "" || worker == rworker) && (rseq <= 0 || rseq > seq) {
				t.Fatalf("%+v refused the worker's final %+v", j, r)
			}
			return
		case r.Status == JobPending || r.Status == JobBlocked || !r.Status.Valid():
			t.Fatalf("%+v accepted %+v", j, r)
		case control && j.Status.Terminal():
			t.Fatalf("control replaced the final %+v with %+v", j, r)
		case !r.Status.Terminal() && (!j.Status.Active() || stateRank(r.Status) <= stateRank(j.Status)):
			t.Fatalf("%+v moved back or revived by %+v", j, r)
		case rseq > 0 && rseq <= seq:
			t.Fatalf("%+v accepted the stale %+v", j, r)
		case j.Status.Terminal() && j.FinalBy != FinalByControl:
			t.Fatalf("the worker final %+v replaced by %+v", j, r)
		}
	})
}
