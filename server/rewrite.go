package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/throttledhq/throttled/conffile"
)

// CONFIG REWRITE
func cmdConfigRewrite(c *client, args [][]byte) error {
	s := c.s
	if s.cfg.ConfigFile == "" {
		return errors.New("The server is running without a config file")
	}
	if err := s.rewriteConfigFile(s.cfg.ConfigFile); err != nil {
		s.log.Warn("CONFIG REWRITE failed", "file", s.cfg.ConfigFile, "err", err)
		return fmt.Errorf("Rewriting config file: %v", err)
	}
	s.log.Info("CONFIG REWRITE executed with success", "file", s.cfg.ConfigFile)
	c.W.OK()
	return nil
}

// rewriteConfigFile writes the running options into the config file at path.
func (s *Server) rewriteConfigFile(path string) error {
	s.rewriteMu.Lock()
	defer s.rewriteMu.Unlock()
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // replace the file a link points to, not the link
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return conffile.WriteAtomic(path, []byte(rewriteConfig(string(old), s.params)))
}

// rewriteConfig returns the config file content old with the running value of every
// parameter in params (conffile.Rewrite); those not in the file keep their lines.
func rewriteConfig(old string, params []*param) string {
	var lines []conffile.Line
	for _, p := range params {
		if p.file == notInFile {
			continue
		}
		text, force := p.configLine()
		lines = append(lines, conffile.Line{Names: append([]string{p.name}, p.aliases...), Text: text, Force: force})
	}
	return conffile.Rewrite(old, lines)
}

// configLine is p's line in the config file, "" when it has none, and whether the line
// must be written even where the file had none: its value is not the default.
func (p *param) configLine() (line string, force bool) {
	v := p.get()
	force = v != p.def
	switch p.file {
	case quoted:
		if v == "" {
			return "", false
		}
		v = conffile.Quote(v)
	case words:
		if v == "" {
			return "", false
		}
	case list:
		if v == "" {
			v = `""`
		}
	case bytesValue:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			v = conffile.FormatSize(n)
		}
	}
	return p.name + " " + v, force
}
