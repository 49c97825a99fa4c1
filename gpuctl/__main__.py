from gpuctl.cli.app import run

run()
