package kubeoracle

import (
	"encoding/json"
	"testing"
)

// TestHandWrittenPluginCases runs the plugins comparison on a few
// hand-written pods and clusters: the smallest of each difference found,
// and a few that agree.
func TestHandWrittenPluginCases(t *testing.T) {
	examples := map[string]string{
		"overhead copied from the RuntimeClass":         `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"1"}}}],"runtimeClassName":"rc"}},"runtimeClasses":[{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","handler":"runc","metadata":{"name":"rc"},"overhead":{"podFixed":{"cpu":"250m","memory":"64Mi"}}}],"serviceAccounts":["default"]}`,
		"global default PriorityClass":                  `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}],"preemptionPolicy":"PreemptLowerPriority"}},"priorityClasses":[{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"low"},"value":10,"globalDefault":true,"preemptionPolicy":"Never"}],"serviceAccounts":["default"]}`,
		"service account named by the deprecated field": `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}],"serviceAccount":"ghost"}},"serviceAccounts":["default","builder"]}`,
		// Kubernetes looks an empty name up with its client, which refuses
		// it ("resource name may not be empty", a 500).
		"empty runtimeClassName": `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}],"runtimeClassName":""}},"serviceAccounts":["default"]}`,
		// The RuntimeClass plugin refuses a pod whose node selector
		// contradicts its class's, after the overhead check.
		"node selector against the RuntimeClass's":       `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}],"nodeSelector":{"zone":"a"},"runtimeClassName":"rc"}},"runtimeClasses":[{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","handler":"runc","metadata":{"name":"rc"},"scheduling":{"nodeSelector":{"zone":"b"}}}],"serviceAccounts":["default"]}`,
		"node selector agreeing with the RuntimeClass's": `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}],"nodeSelector":{"zone":"b","disk":"ssd"},"runtimeClassName":"rc"}},"runtimeClasses":[{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","handler":"runc","metadata":{"name":"rc"},"scheduling":{"nodeSelector":{"zone":"b","tier":"x"}}}],"serviceAccounts":["default"]}`,
		"overhead refused before the node selector":      `{"pod":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}],"nodeSelector":{"zone":"a"},"overhead":{"cpu":"1"},"runtimeClassName":"rc"}},"runtimeClasses":[{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","handler":"runc","metadata":{"name":"rc"},"overhead":{"podFixed":{"cpu":"250m"}},"scheduling":{"nodeSelector":{"zone":"b"}}}],"serviceAccounts":["default"]}`,
	}
	for name, raw := range examples {
		t.Run(name, func(t *testing.T) {
			var tree any
			if err := json.Unmarshal([]byte(raw), &tree); err != nil {
				t.Fatal(err)
			}
			switch out := checkPlugins(tree); {
			case out.skip:
				t.Errorf("skipped: %s", raw)
			case out.kind != "":
				t.Errorf("%s\n%s\ninput: %s", out.kind, out.detail, raw)
			}
		})
	}
}
