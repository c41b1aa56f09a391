package main

import "github.com/spf13/cobra"

// commands lists the subcommands, one file each.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newBuildCmd(),
		newIngestCmd(),
		newInspectCmd(),
		newDoctorCmd(),
		newVerifyCmd(),
		newEvolveCmd(),
		newAdmitCmd(),
		newDedupCmd(),
		newDecontamCmd(),
		newSelectCmd(),
		newSynthesizeCmd(),
		newComposeCmd(),
		newPackCmd(),
		newReportCmd(),
		newPlanCmd(),
		newVerifyShardsCmd(),
		newStagesCmd(),
	}
}
