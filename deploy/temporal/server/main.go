// The Temporal server of the production shape: the upstream server (go.temporal.io/server, the
// version go.mod pins) started as its own cmd/server starts it, with one difference: the frontend
// authorizes every call by the subject of the caller's client certificate (package authz), with the
// roles of the file --authorization names (TEMPORAL_AUTHORIZATION_FILE). The file is required: the
// server does not start without an authorizer. Built by scripts/prod-binaries.js and by
// deploy/temporal/server/Dockerfile.
package main

import (
	"fmt"
	"os"
	"path"
	"strings"
	_ "time/tzdata" // embed tzdata as a fallback

	"github.com/urfave/cli/v2"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // the PostgreSQL plugin
	"go.temporal.io/server/temporal"

	"automation-governance/temporal-server/authz"
)

func main() {
	if err := buildCLI().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func buildCLI() *cli.App {
	app := cli.NewApp()
	app.Name = "temporal-server"
	app.Usage = "Temporal server, authorizing by client certificate subject"
	app.Version = headers.ServerVersion
	app.ArgsUsage = " "
	app.Flags = []cli.Flag{
		&cli.StringFlag{Name: "root", Aliases: []string{"r"}, Value: ".", Usage: "root directory of execution environment", EnvVars: []string{config.EnvKeyRoot}},
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: "config", Usage: "config dir path relative to root", EnvVars: []string{config.EnvKeyConfigDir}},
		&cli.StringFlag{Name: "env", Aliases: []string{"e"}, Value: "development", Usage: "runtime environment", EnvVars: []string{config.EnvKeyEnvironment}},
		&cli.StringFlag{Name: "zone", Aliases: []string{"az"}, Usage: "availability zone", EnvVars: []string{config.EnvKeyAvailabilityZone, config.EnvKeyAvailabilityZoneTypo}},
		&cli.StringFlag{Name: "authorization", Usage: "the file of roles by certificate subject (deploy/temporal/authorization.yaml)", EnvVars: []string{"TEMPORAL_AUTHORIZATION_FILE"}},
	}
	app.Commands = []*cli.Command{
		{
			Name:  "check-authorization",
			Usage: "Validate the authorization file and print each subject's role",
			Action: func(c *cli.Context) error {
				policy, err := loadPolicy(c, nil)
				if err != nil {
					return err
				}
				fmt.Println(strings.Join(policy.Subjects(), "\n"))
				return nil
			},
		},
		{
			Name:  "render-config",
			Usage: "Render server config template",
			Action: func(c *cli.Context) error {
				cfg, err := config.LoadConfig(c.String("env"), path.Join(c.String("root"), c.String("config")), c.String("zone"))
				if err != nil {
					return fmt.Errorf("unable to load configuration: %w", err)
				}
				fmt.Println(cfg.String())
				return nil
			},
		},
		{
			Name:  "start",
			Usage: "Start Temporal server",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "service", Aliases: []string{"svc"}, Value: cli.NewStringSlice(temporal.DefaultServices...), Usage: "service(s) to start"},
			},
			Before: func(c *cli.Context) error {
				if c.Args().Len() > 0 {
					return fmt.Errorf("start takes no arguments: use --service")
				}
				return nil
			},
			Action: start,
		},
	}
	return app
}

func loadPolicy(c *cli.Context, logger log.Logger) (*authz.Policy, error) {
	file := c.String("authorization")
	if file == "" {
		return nil, fmt.Errorf("no authorization file: set --authorization or TEMPORAL_AUTHORIZATION_FILE (deploy/temporal/authorization.yaml)")
	}
	return authz.Load(file, logger)
}

func start(c *cli.Context) error {
	cfg, err := config.LoadConfig(c.String("env"), path.Join(c.String("root"), c.String("config")), c.String("zone"))
	if err != nil {
		return fmt.Errorf("unable to load configuration: %w", err)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
	policy, err := loadPolicy(c, logger)
	if err != nil {
		return err
	}
	logger.Info("Authorization by certificate subject.", tag.NewStringsTag("subjects", policy.Subjects()))

	var dynamicConfigClient dynamicconfig.Client
	if cfg.DynamicConfigClient != nil {
		dynamicConfigClient, err = dynamicconfig.NewFileBasedClient(cfg.DynamicConfigClient, logger, temporal.InterruptCh())
		if err != nil {
			return fmt.Errorf("unable to create dynamic config client: %w", err)
		}
	} else {
		dynamicConfigClient = dynamicconfig.NewNoopClient()
	}

	s, err := temporal.NewServer(
		temporal.ForServices(c.StringSlice("service")),
		temporal.WithConfig(cfg),
		temporal.WithDynamicConfigClient(dynamicConfigClient),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(policy),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return policy }),
	)
	if err != nil {
		return fmt.Errorf("unable to create server: %w", err)
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("unable to start server: %w", err)
	}
	return nil
}
