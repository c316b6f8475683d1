package config

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Config is the asset server's configuration file.
type Config struct {
	Listen       string        `json:"listen"`
	StoreDir     string        `json:"store_dir"`
	MaxUploadMB  int           `json:"max_upload_mb"`
	ReadTimeout  time.Duration `json:"read_timeout"`
	AllowedTeams []string      `json:"allowed_teams"`
}

func defaults() Config {
	return Config{
		Listen:      ":8420",
		StoreDir:    "/var/lib/assetd",
		MaxUploadMB: 512,
		ReadTimeout: 30 * time.Second,
	}
}

// Load reads path over the defaults.
func Load(path string) (Config, error) {
	cfg := defaults()
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("parse config %s: %w", path, err)
	}
	if err := cfg.validate(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

func (c Config) validate() error {
	if c.MaxUploadMB <= 0 {
		return fmt.Errorf("max_upload_mb must be positive, got %d", c.MaxUploadMB)
	}
	if len(c.AllowedTeams) == 0 {
		return fmt.Errorf("allowed_teams is empty: no one could upload")
	}
	return nil
}
