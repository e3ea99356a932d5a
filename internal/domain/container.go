package domain

import (
	"encoding/json"
	"fmt"
)

// JobContainer is a container action on one server (issue 15): inventory
// refresh, start/stop/restart, pull, compose update, image removal,
// prune. Params carry the op (actions.ContainerParams).
const JobContainer JobKind = "container-action"

// ContainerJobKinds lists the container kinds (part of JobKinds).
var ContainerJobKinds = []JobKind{JobContainer}

// containerOpNames name a container job by its params' "op".
var containerOpNames = map[string]string{
	"refresh":        "Refresh containers",
	"start":          "Start container %s",
	"stop":           "Stop container %s",
	"restart":        "Restart container %s",
	"pull":           "Pull image %s",
	"pull-all":       "Pull all images in use",
	"compose-update": "Update compose project %s",
	"remove-image":   "Remove image %s",
	"prune":          "Prune containers and images",
}

func containerJobName(params []byte) string {
	var p struct {
		Op        string `json:"op"`
		Container string `json:"container"`
		Image     string `json:"image"`
		Project   string `json:"project"`
		Prune     struct {
			DryRun bool `json:"dry_run"`
		} `json:"prune"`
	}
	_ = json.Unmarshal(params, &p)
	f, ok := containerOpNames[p.Op]
	if !ok {
		return "Container action"
	}
	if p.Op == "prune" && p.Prune.DryRun {
		return "List what a prune would free"
	}
	switch p.Op {
	case "start", "stop", "restart":
		return fmt.Sprintf(f, p.Container)
	case "pull", "remove-image":
		return fmt.Sprintf(f, p.Image)
	case "compose-update":
		return fmt.Sprintf(f, p.Project)
	}
	return f
}
