package deploy

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chart = "helm/throttled"

// The tests drive helm's own packages (pkg/lint, pkg/engine, pkg/releaseutil) as `helm lint`
// and `helm template` call them, not the helm command: building the command from source
// compiled 935 packages more (Kubernetes' client, kubectl, the registry client, SQL drivers)
// than deploy/'s tests, 197 s of a cold make test on two cores; the packages add 207.
// TestPlainManifests keeps the two honest: make manifests renders kubernetes/throttled.yaml
// with the helm command, and the test renders the same values here, byte for byte.

// values is what helm's --values files and --set assignments make, merged as helm merges
// them (pkg/cli/values's Options.MergeValues, which would pull helm's getters and registry
// client into the build to read a file): each file over the ones before it, map by map, then
// each --set.
func values(t *testing.T, files []string, set ...string) map[string]any {
	t.Helper()
	base := map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		m := map[string]any{}
		require.NoError(t, yaml.Unmarshal(data, &m), f)
		base = mergeMaps(base, m)
	}
	for _, s := range set {
		require.NoError(t, strvals.ParseInto(s, base), s)
	}
	return base
}

// mergeMaps is pkg/cli/values's: b's keys over a's, maps merged key by key.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(bv, v)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// lintStrict is `helm lint --strict chart` with vals: action.Lint's run of pkg/lint in the
// namespace helm names without --namespace, where --strict fails the chart on a warning as on
// an error. The messages below a warning (INFO) are logged.
func lintStrict(t *testing.T, vals map[string]any) {
	t.Helper()
	linter := lint.AllWithKubeVersionAndSchemaValidation(chart, vals, "default", nil, false)
	var failed []string
	for _, msg := range linter.Messages {
		if msg.Severity >= support.WarningSev {
			failed = append(failed, msg.Error())
		} else {
			t.Log(msg.Error())
		}
	}
	require.Empty(t, failed, "helm lint --strict: the chart failed")
}

// template is what `helm template throttled chart --namespace namespace` prints with vals:
// the chart loaded and checked installable, its dependencies processed and its values made as
// action.Install makes them for a client-only dry run (release throttled, revision 1, an
// install, helm's default capabilities), the templates rendered without a cluster (lookup
// finds nothing), NOTES.txt left out, the manifests sorted in install order and each written
// under its "# Source:" line, then the hooks.
func template(vals map[string]any, namespace string) (string, error) {
	ch, err := loader.Load(chart)
	if err != nil {
		return "", err
	}
	if typ := ch.Metadata.Type; typ != "" && typ != "application" {
		return "", fmt.Errorf("%s charts are not installable", typ)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return "", err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals,
		chartutil.ReleaseOptions{Name: "throttled", Namespace: namespace, Revision: 1, IsInstall: true}, caps, false)
	if err != nil {
		return "", err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return "", err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	out := strings.TrimSpace(b.String()) + "\n"
	for _, h := range hooks {
		out += fmt.Sprintf("---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return out, nil
}

// variants are the values helm_test.go renders the chart with: none (the defaults), and
// files of testdata/.
var variants = map[string][]string{
	"default":  nil,
	"upstream": {"testdata/upstream.yaml"},
	"replicas": {"testdata/replicas.yaml"},
}

func TestHelmLint(t *testing.T) {
	for name, files := range variants {
		t.Run(name, func(t *testing.T) {
			lintStrict(t, values(t, files))
		})
	}
}

// objects is what one rendering made, by kind and name, each decoded strictly.
type objects struct {
	statefulSets    map[string]*appsv1.StatefulSet
	deployments     map[string]*appsv1.Deployment
	services        map[string]*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	serviceAccounts map[string]*corev1.ServiceAccount
	pdbs            map[string]*policyv1.PodDisruptionBudget
	serviceMonitors map[string]*monitoringv1.ServiceMonitor
}

// decodeStrict decodes one YAML document into out, failing on a field out's type lacks.
func decodeStrict(doc []byte, out any) error {
	return yaml.UnmarshalStrict(doc, out)
}

// parse splits a rendering into its documents and decodes each into its kind's API type.
func parse(t *testing.T, rendered string) objects {
	t.Helper()
	o := objects{
		statefulSets: map[string]*appsv1.StatefulSet{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, serviceAccounts: map[string]*corev1.ServiceAccount{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, serviceMonitors: map[string]*monitoringv1.ServiceMonitor{},
	}
	for _, doc := range strings.Split(rendered, "\n---") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind == "" {
			require.Empty(t, strings.TrimSpace(stripComments(doc)), "a document without a kind")
			continue
		}
		name := head.Metadata.Name
		require.NotEmpty(t, name, "a %s without a name", head.Kind)
		var err error
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 StatefulSet":
			o.statefulSets[name] = new(appsv1.StatefulSet)
			err = decodeStrict([]byte(doc), o.statefulSets[name])
		case "apps/v1 Deployment":
			o.deployments[name] = new(appsv1.Deployment)
			err = decodeStrict([]byte(doc), o.deployments[name])
		case "v1 Service":
			o.services[name] = new(corev1.Service)
			err = decodeStrict([]byte(doc), o.services[name])
		case "v1 ConfigMap":
			o.configMaps[name] = new(corev1.ConfigMap)
			err = decodeStrict([]byte(doc), o.configMaps[name])
		case "v1 Secret":
			o.secrets[name] = new(corev1.Secret)
			err = decodeStrict([]byte(doc), o.secrets[name])
		case "v1 ServiceAccount":
			o.serviceAccounts[name] = new(corev1.ServiceAccount)
			err = decodeStrict([]byte(doc), o.serviceAccounts[name])
		case "policy/v1 PodDisruptionBudget":
			o.pdbs[name] = new(policyv1.PodDisruptionBudget)
			err = decodeStrict([]byte(doc), o.pdbs[name])
		case "monitoring.coreos.com/v1 ServiceMonitor":
			o.serviceMonitors[name] = new(monitoringv1.ServiceMonitor)
			err = decodeStrict([]byte(doc), o.serviceMonitors[name])
		default:
			t.Fatalf("%s %s %s: a kind the test does not know", head.APIVersion, head.Kind, name)
		}
		require.NoError(t, err, "%s %s:\n%s", head.Kind, name, doc)
	}
	return o
}

// stripComments drops YAML's comment lines.
func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestStrictDecoding shows that the decoding catches a misspelt field.
func TestStrictDecoding(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  replica: 1\n")
	err := decodeStrict(doc, new(appsv1.StatefulSet))
	require.ErrorContains(t, err, `unknown field "replica"`)
}

// render is `helm template throttled chart --namespace throttled --values file...`, parsed.
func render(t *testing.T, files ...string) objects {
	t.Helper()
	out, err := template(values(t, files), "throttled")
	require.NoError(t, err)
	return parse(t, out)
}

// checkPod checks what every pod of the chart must have: the securityContext, the probes on
// metrics-port, the config and data mounts, resources.
func checkPod(t *testing.T, spec corev1.PodSpec) *corev1.Container {
	t.Helper()
	require.NotNil(t, spec.SecurityContext)
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.Equal(t, int64(65532), *spec.SecurityContext.RunAsUser)
	require.Equal(t, int64(65532), *spec.SecurityContext.FSGroup)
	require.False(t, *spec.AutomountServiceAccountToken)
	require.Len(t, spec.Containers, 1)
	c := &spec.Containers[0]
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	require.Equal(t, int32(6379), ports["resp"])
	require.Equal(t, int32(9121), ports["metrics"])
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "metrics", c.LivenessProbe.HTTPGet.Port.String())
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "metrics", c.ReadinessProbe.HTTPGet.Port.String())
	require.Equal(t, "/healthz", c.StartupProbe.HTTPGet.Path)

	require.Equal(t, []string{"/usr/local/bin/throttled", "/etc/throttled/throttled.conf"}, c.Command)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	require.Equal(t, map[string]string{"/etc/throttled": "config", "/data": "data", "/tmp": "tmp"}, mounts)
	require.NotEmpty(t, c.Resources.Requests)
	require.NotEmpty(t, c.Resources.Limits)
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	// Out of the Services before SIGTERM, with time left for the flush.
	require.Equal(t, int64(5), c.Lifecycle.PreStop.Sleep.Seconds)
	require.Less(t, c.Lifecycle.PreStop.Sleep.Seconds+10, *spec.TerminationGracePeriodSeconds)
	return c
}

// passwordFrom checks that requirepass comes from secret's key through the environment.
func passwordFrom(t *testing.T, c *corev1.Container, secret, key string) {
	t.Helper()
	var found bool
	for _, e := range c.Env {
		if e.Name == "THROTTLED_REQUIREPASS" {
			found = true
			require.Equal(t, secret, e.ValueFrom.SecretKeyRef.Name)
			require.Equal(t, key, e.ValueFrom.SecretKeyRef.Key)
		}
	}
	require.True(t, found, "no THROTTLED_REQUIREPASS")
	for _, a := range c.Args {
		require.NotContains(t, a, "THROTTLED_", "a secret on the command line: every process of the pod reads it")
	}
}

// conf is a rendered throttled.conf's options: directive to value.
func conf(t *testing.T, cm *corev1.ConfigMap) map[string]string {
	t.Helper()
	require.NotNil(t, cm)
	options := map[string]string{}
	for _, line := range strings.Split(cm.Data["throttled.conf"], "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			name, value, _ := strings.Cut(line, " ")
			_, dup := options[name]
			require.False(t, dup, "%s twice", name)
			options[name] = value
		}
	}
	return options
}

func TestHelmDefault(t *testing.T) {
	o := render(t)
	require.Len(t, o.statefulSets, 1)
	require.Empty(t, o.deployments)
	ss := o.statefulSets["throttled"]
	require.NotNil(t, ss)
	require.Equal(t, int32(1), *ss.Spec.Replicas)
	require.Equal(t, "throttled-headless", ss.Spec.ServiceName)
	require.Len(t, ss.Spec.VolumeClaimTemplates, 1)
	claim := ss.Spec.VolumeClaimTemplates[0]
	require.Equal(t, "data", claim.Name)
	require.Equal(t, "1Gi", claim.Spec.Resources.Requests.Storage().String())
	c := checkPod(t, ss.Spec.Template.Spec)
	require.Equal(t, "ghcr.io/throttledhq/throttled:0.1.0", c.Image)
	passwordFrom(t, c, "throttled", "password")
	for _, v := range ss.Spec.Template.Spec.Volumes {
		require.NotEqual(t, "data", v.Name, "the claim template provides /data")
	}
	// The selector picks the template's labels.
	for k, v := range ss.Spec.Selector.MatchLabels {
		require.Equal(t, v, ss.Spec.Template.Labels[k], k)
	}

	// A random password, created.
	secret := o.secrets["throttled"]
	require.NotNil(t, secret)
	require.Len(t, secret.Data["password"], 32)

	require.Equal(t, map[string]string{
		"bind": "0.0.0.0", "port": "6379", "dir": "/data", "protected-mode": "no",
		"metrics-port": "9121", "http-port": "8080", "appendfsync": "everysec", "loglevel": "notice", "log-format": "json",
	}, conf(t, o.configMaps["throttled"]))

	svc := o.services["throttled"]
	require.NotNil(t, svc)
	require.Equal(t, "primary", svc.Spec.Selector["app.kubernetes.io/component"])
	require.Equal(t, []string{"resp", "http"}, portNames(svc))
	require.Equal(t, []string{"metrics"}, portNames(o.services["throttled-metrics"]))
	headless := o.services["throttled-headless"]
	require.Equal(t, "None", headless.Spec.ClusterIP)
	require.True(t, headless.Spec.PublishNotReadyAddresses)
	require.NotContains(t, o.services, "throttled-replicas")

	pdb := o.pdbs["throttled"]
	require.NotNil(t, pdb)
	require.Equal(t, "1", pdb.Spec.MaxUnavailable.String())
	require.Empty(t, o.serviceMonitors)
	require.Contains(t, o.serviceAccounts, "throttled")
}

func portNames(svc *corev1.Service) []string {
	var names []string
	for _, p := range svc.Spec.Ports {
		names = append(names, p.Name)
	}
	return names
}

func TestHelmUpstream(t *testing.T) {
	o := render(t, variants["upstream"]...)
	require.Empty(t, o.statefulSets)
	require.Empty(t, o.secrets, "both Secrets exist already")
	d := o.deployments["throttled"]
	require.NotNil(t, d)
	require.Equal(t, int32(4), *d.Spec.Replicas)
	c := checkPod(t, d.Spec.Template.Spec)
	passwordFrom(t, c, "throttled-auth", "password")
	require.Empty(t, c.Args, "the password and the upstream's URL come from the environment")
	var upstreamEnv bool
	for _, e := range c.Env {
		if e.Name == "THROTTLED_UPSTREAM" {
			upstreamEnv = true
			require.Equal(t, "throttled-upstream", e.ValueFrom.SecretKeyRef.Name)
			require.Equal(t, "url", e.ValueFrom.SecretKeyRef.Key)
		}
	}
	require.True(t, upstreamEnv)
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	require.NotNil(t, volumes["data"].EmptyDir, "stateless: /data is scratch")

	options := conf(t, o.configMaps["throttled"])
	require.Equal(t, "no", options["appendonly"])
	require.Equal(t, "0.25", options["upstream-fallback-share"])
	require.NotContains(t, options, "upstream", "the URL comes from the Secret")
	// The edge's doors decide through CHECK, which upstream mode does not serve.
	require.NotContains(t, options, "http-port")
	require.NotContains(t, options, "grpc-port")

	svc := o.services["throttled"]
	require.Equal(t, "upstream", svc.Spec.Selector["app.kubernetes.io/component"])
	require.Equal(t, []string{"resp"}, portNames(svc))
	require.NotContains(t, o.services, "throttled-headless")

	sm := o.serviceMonitors["throttled"]
	require.NotNil(t, sm)
	require.Equal(t, "prometheus", sm.Labels["release"])
	require.Equal(t, "metrics", sm.Spec.Endpoints[0].Port)
	require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	// The ServiceMonitor selects the metrics Service.
	for k, v := range sm.Spec.Selector.MatchLabels {
		require.Equal(t, v, o.services["throttled-metrics"].Labels[k], k)
	}
}

func TestHelmReplicas(t *testing.T) {
	o := render(t, variants["replicas"]...)
	require.Len(t, o.statefulSets, 2)
	primary, replica := o.statefulSets["throttled"], o.statefulSets["throttled-replica"]
	require.NotNil(t, replica)
	require.Equal(t, int32(1), *primary.Spec.Replicas)
	require.Equal(t, int32(2), *replica.Spec.Replicas)
	claim := replica.Spec.VolumeClaimTemplates[0]
	require.Equal(t, "fast", *claim.Spec.StorageClassName)
	require.Equal(t, "5Gi", claim.Spec.Resources.Requests.Storage().String())
	c := checkPod(t, replica.Spec.Template.Spec)
	require.Equal(t, []string{"--replicaof", "throttled-0.throttled-headless.throttled.svc", "6379"}, c.Args)
	var masterauth bool
	for _, e := range c.Env {
		if e.Name == "THROTTLED_MASTERAUTH" {
			masterauth = true
			require.Equal(t, "password", e.ValueFrom.SecretKeyRef.Key)
		}
	}
	require.True(t, masterauth, "a replica authenticates to its primary with the Secret's password")
	require.Equal(t, "replica", replica.Spec.Template.Labels["app.kubernetes.io/component"])

	secret := o.secrets["throttled"]
	require.Equal(t, "s3cret", string(secret.Data["password"]))
	options := conf(t, o.configMaps["throttled"])
	require.Equal(t, "512mb", options["maxmemory"])
	require.Equal(t, "volatile-ttl", options["maxmemory-policy"])
	require.Equal(t, "api THROTTLE 99 100 1m", options["policy"])

	require.Equal(t, "replica", o.services["throttled-replicas"].Spec.Selector["app.kubernetes.io/component"])
	require.Equal(t, "primary", o.services["throttled"].Spec.Selector["app.kubernetes.io/component"])

	// Envoy's service: its configuration projected beside throttled.conf, on the primary's
	// Service.
	require.Equal(t, "8081", options["grpc-port"])
	require.Equal(t, "/etc/throttled/ratelimit", options["ratelimit-config"])
	require.Contains(t, o.configMaps["throttled-ratelimit"].Data["api.yaml"], "domain: api")
	require.Equal(t, []string{"resp", "http", "grpc"}, portNames(o.services["throttled"]))
	for _, ss := range []*appsv1.StatefulSet{primary, replica} {
		var paths []string
		for _, v := range ss.Spec.Template.Spec.Volumes {
			if v.Name == "config" {
				for _, src := range v.Projected.Sources {
					for _, item := range src.ConfigMap.Items {
						paths = append(paths, item.Path)
					}
				}
			}
		}
		require.Equal(t, []string{"throttled.conf", "ratelimit/api.yaml"}, paths)
	}
}

// TestHelmRefusesNonsense: values that cannot work fail the rendering with a message.
func TestHelmRefusesNonsense(t *testing.T) {
	for name, tc := range map[string]struct {
		set  []string
		want string
	}{
		"upstream without one": {[]string{"mode=upstream"}, "mode upstream needs upstream.url"},
		"unknown mode":         {[]string{"mode=cluster"}, `mode: "cluster" is not standalone or upstream`},
		"replicas upstream":    {[]string{"mode=upstream", "upstream.url=redis://r:6379", "replicas.count=2"}, "replicas.count"},
		"grpc upstream":        {[]string{"mode=upstream", "upstream.url=redis://r:6379", "grpc.enabled=true"}, "grpc.enabled: Envoy's rate-limit service decides through CHECK"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := template(values(t, nil, tc.set...), "default")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestPlainManifests: kubernetes/throttled.yaml is what the chart renders with
// kubernetes/values.yaml (make manifests writes it), and needs no Secret the chart would
// have made with a random password.
func TestPlainManifests(t *testing.T) {
	want, err := template(values(t, []string{"kubernetes/values.yaml"}), "throttled")
	require.NoError(t, err)
	got, err := os.ReadFile("kubernetes/throttled.yaml")
	require.NoError(t, err)
	require.Equal(t, want, string(got), "deploy/kubernetes/throttled.yaml is stale: run make manifests")
	o := parse(t, string(got))
	require.Empty(t, o.secrets)
	passwordFrom(t, &o.statefulSets["throttled"].Spec.Template.Spec.Containers[0], "throttled-auth", "password")
}

// TestRenderedConfigStarts starts throttled (make image's binary for this machine) with each
// variant's rendered throttled.conf, from the loopback on free ports: the options the chart
// writes are ones the server takes, and /healthz answers. The variants' peers are ports that
// refuse connections: an upstream (its URL is in a Secret) and a primary (the pod's DNS name).
func TestRenderedConfigStarts(t *testing.T) {
	for name, files := range variants {
		t.Run(name, func(t *testing.T) {
			o := render(t, files...)
			dir := t.TempDir()
			file := filepath.Join(dir, "throttled.conf")
			require.NoError(t, os.WriteFile(file, []byte(o.configMaps["throttled"].Data["throttled.conf"]), 0o644))
			metrics := freePort(t)
			args := []string{file, "--bind", "127.0.0.1", "--port", strconv.Itoa(freePort(t)), "--dir", filepath.Join(dir, "data"),
				"--metrics-port", strconv.Itoa(metrics)}
			if _, on := conf(t, o.configMaps["throttled"])["http-port"]; on {
				args = append(args, "--http-port", strconv.Itoa(freePort(t)))
			}
			if rl := o.configMaps["throttled-ratelimit"]; rl != nil {
				require.NoError(t, os.Mkdir(filepath.Join(dir, "ratelimit"), 0o755))
				for f, content := range rl.Data {
					require.NoError(t, os.WriteFile(filepath.Join(dir, "ratelimit", f), []byte(content), 0o644))
				}
				args = append(args, "--grpc-port", strconv.Itoa(freePort(t)), "--ratelimit-config", filepath.Join(dir, "ratelimit"))
			}
			switch name {
			case "upstream":
				args = append(args, "--upstream", fmt.Sprintf("redis://127.0.0.1:%d/0", freePort(t)))
			case "replicas":
				args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(freePort(t)))
			}
			bin := filepath.Join("..", "bin", "linux-"+runtime.GOARCH, "throttled")
			_, err := os.Stat(bin)
			require.NoError(t, err, "make image builds it: run make test-deploy")
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				cmd.Process.Kill()
				cmd.Wait()
			})
			exited := make(chan struct{})
			go func() {
				cmd.Process.Wait()
				close(exited)
			}()
			healthz := fmt.Sprintf("http://127.0.0.1:%d/healthz", metrics)
			require.Eventually(t, func() bool {
				select {
				case <-exited:
					return true
				default:
				}
				resp, err := http.Get(healthz)
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			}, 20*time.Second, 50*time.Millisecond, "/healthz never answered")
			select {
			case <-exited:
				t.Fatal("throttled exited: its configuration is above")
			default:
			}
		})
	}
}

// freePort is a port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
