package domain

// Job kinds of the inventory area (issue 5). Every package change is
// followed by an inventory refresh in the same job.
const (
	JobRefresh       JobKind = "refresh"
	JobPackageAction JobKind = "package-action"
	JobReboot        JobKind = "reboot"
	JobStorageSample JobKind = "storage-sample"
)

// InventoryJobKinds lists the inventory kinds (part of JobKinds).
var InventoryJobKinds = []JobKind{JobRefresh, JobPackageAction, JobReboot, JobStorageSample}
