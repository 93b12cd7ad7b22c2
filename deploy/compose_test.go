package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestCompose loads compose/docker-compose.yml as docker compose does (compose-go: the
// schema, interpolation, paths resolved) and checks the services, their ports and volumes,
// and the files Prometheus and Grafana are given.
func TestCompose(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{"compose/docker-compose.yml"},
		cli.WithEnv([]string{"THROTTLED_PASSWORD=s3cret"}), cli.WithResolvedPaths(true))
	require.NoError(t, err)
	p, err := opts.LoadProject(context.Background())
	require.NoError(t, err)
	require.Equal(t, "throttled", p.Name)
	require.ElementsMatch(t, []string{"throttled", "prometheus", "grafana"}, p.ServiceNames())

	th := p.Services["throttled"]
	require.Equal(t, "ghcr.io/throttledhq/throttled:dev", th.Image)
	require.Equal(t, types.ShellCommand{"--requirepass", "s3cret"}, th.Command)
	require.Equal(t, map[string]string{"6379": "6379", "8080": "8080", "9121": "9121"}, published(th))
	for _, port := range th.Ports {
		require.Equal(t, "127.0.0.1", port.HostIP, "protected-mode is off in the image: the loopback only")
	}
	require.True(t, th.ReadOnly)
	require.Equal(t, []string{"/tmp"}, []string(th.Tmpfs))
	require.Len(t, th.Volumes, 1)
	require.Equal(t, types.VolumeTypeVolume, th.Volumes[0].Type)
	require.Equal(t, "/data", th.Volumes[0].Target)
	require.Contains(t, p.Volumes, th.Volumes[0].Source)

	// Prometheus scrapes throttled's metrics-port, by the service's name.
	prom := p.Services["prometheus"]
	promConf := bindSource(t, prom, "/etc/prometheus/prometheus.yml")
	var pc struct {
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	readYAML(t, promConf, &pc)
	require.Len(t, pc.ScrapeConfigs, 1)
	require.Equal(t, []string{"throttled:9121"}, pc.ScrapeConfigs[0].StaticConfigs[0].Targets)
	require.Contains(t, prom.DependsOn, "throttled")

	// Grafana: the Prometheus data source and the repository's dashboard, provisioned.
	gr := p.Services["grafana"]
	var ds struct {
		Datasources []struct {
			Type      string `json:"type"`
			URL       string `json:"url"`
			IsDefault bool   `json:"isDefault"`
		} `json:"datasources"`
	}
	readYAML(t, bindSource(t, gr, "/etc/grafana/provisioning/datasources/throttled.yml"), &ds)
	require.Len(t, ds.Datasources, 1)
	require.Equal(t, "prometheus", ds.Datasources[0].Type)
	require.Equal(t, "http://prometheus:9090", ds.Datasources[0].URL)
	require.True(t, ds.Datasources[0].IsDefault)
	var dp struct {
		Providers []struct {
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	readYAML(t, bindSource(t, gr, "/etc/grafana/provisioning/dashboards/throttled.yml"), &dp)
	require.Equal(t, "/var/lib/grafana/dashboards", dp.Providers[0].Options.Path)
	dashboard := bindSource(t, gr, "/var/lib/grafana/dashboards/throttled.json")
	repoDashboard, err := filepath.Abs("../grafana/throttled.json")
	require.NoError(t, err)
	require.Equal(t, repoDashboard, dashboard)
	require.Equal(t, "/var/lib/grafana/dashboards/throttled.json", *gr.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
}

// published maps a service's published ports to its container's.
func published(s types.ServiceConfig) map[string]string {
	m := map[string]string{}
	for _, p := range s.Ports {
		m[p.Published] = strconv.FormatUint(uint64(p.Target), 10)
	}
	return m
}

// bindSource is the file mounted read-only at target in s, which must exist.
func bindSource(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target == target {
			require.Equal(t, types.VolumeTypeBind, v.Type, target)
			require.True(t, v.ReadOnly, target)
			_, err := os.Stat(v.Source)
			require.NoError(t, err, target)
			return v.Source
		}
	}
	t.Fatalf("%s mounts nothing at %s", s.Name, target)
	return ""
}

func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, out), path)
}
