// Package k8s holds the Kubernetes manifests; its test checks them.
package k8s

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// job is the part of a batch/v1 Job the test reads.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		BackoffLimit   *int   `yaml:"backoffLimit"`
		Template       struct {
			Spec struct {
				RestartPolicy string      `yaml:"restartPolicy"`
				Containers    []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
}

func read(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(false)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestJob: the Job is Indexed, one pod per driver, never retried; index 0 leads with
// --drivers equal to the completions, the others follow with their index as driver id;
// the DSN comes from the Secret; resources are requested.
func TestJob(t *testing.T) {
	var j job
	read(t, "job.yaml", &j)
	s := j.Spec
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Metadata.Name == "" {
		t.Fatalf("not a named batch/v1 Job: %s %s %q", j.APIVersion, j.Kind, j.Metadata.Name)
	}
	if s.CompletionMode != "Indexed" || s.Completions < 2 || s.Parallelism != s.Completions {
		t.Errorf("completionMode %q completions %d parallelism %d: want Indexed, >= 2, all at once (the fleet waits for every driver)",
			s.CompletionMode, s.Completions, s.Parallelism)
	}
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 || s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("backoffLimit %v restartPolicy %q: a benchmark must not be retried behind the user's back", s.BackoffLimit, s.Template.Spec.RestartPolicy)
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]
	env := map[string]string{}
	secret := ""
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.Name == "PGCEILING_DSN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secret = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if n, err := strconv.Atoi(env["DRIVERS"]); err != nil || n != s.Completions {
		t.Errorf("DRIVERS %q, want the completions %d", env["DRIVERS"], s.Completions)
	}
	var sec struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		StringData map[string]string `yaml:"stringData"`
	}
	read(t, "secret.yaml", &sec)
	if sec.Kind != "Secret" || secret != sec.Metadata.Name+"/dsn" || sec.StringData["dsn"] == "" {
		t.Errorf("PGCEILING_DSN from %q; the Secret %q has dsn %t", secret, sec.Metadata.Name, sec.StringData["dsn"] != "")
	}
	script := strings.Join(append(c.Command, c.Args...), " ")
	lead, follow, ok := strings.Cut(script, "else")
	if !ok || !strings.Contains(lead, `"$JOB_COMPLETION_INDEX" = "0"`) {
		t.Fatalf("the script does not branch on JOB_COMPLETION_INDEX = 0:\n%s", script)
	}
	for _, want := range []string{"pgceiling search", `--drivers "$DRIVERS"`, `--fleet "$FLEET"`, "--json /results/"} {
		if !strings.Contains(lead, want) {
			t.Errorf("the leader's branch lacks %q:\n%s", want, lead)
		}
	}
	for _, want := range []string{"pgceiling follow", `--driver-id "$JOB_COMPLETION_INDEX"`, `--fleet "$FLEET"`} {
		if !strings.Contains(follow, want) {
			t.Errorf("the followers' branch lacks %q:\n%s", want, follow)
		}
	}
	if strings.Contains(script, "--dsn") {
		t.Error("the script passes --dsn: the DSN (and its password) would show in the process list; use PGCEILING_DSN")
	}
	for _, k := range []string{"cpu", "memory"} {
		if c.Resources.Requests[k] == "" || c.Resources.Limits[k] == "" {
			t.Errorf("resources: %s request %q limit %q", k, c.Resources.Requests[k], c.Resources.Limits[k])
		}
	}
}
