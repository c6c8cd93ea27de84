package oxy

import (
	"context"

	"github.com/oxypipe/oxypipe/internal/local"
	"github.com/oxypipe/oxypipe/internal/topology"
)

// WithLocal returns c with tune applied to the in-process pipeline's
// configuration after the client filled it in (stage timings of the tests).
func WithLocal(c Config, tune func(*local.Config)) Config {
	c.local = tune
	return c
}

// Cluster is the in-process pipeline (nil with an external NATS), started
// if needed: the tests read the emulator's Stats and kill it through it.
func (c *Client) Cluster(ctx context.Context) (*local.Cluster, error) { return c.inProcess(ctx) }

// Topology is the topology of the pipeline the client uses.
func (c *Client) Topology(ctx context.Context) (*topology.Topology, error) {
	t, _, err := c.backend(ctx)
	return t, err
}
