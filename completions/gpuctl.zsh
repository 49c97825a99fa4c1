
#compdef gpuctl

_gpuctl_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _GPUCTL_COMPLETE=complete_zsh gpuctl)
}

compdef _gpuctl_completion gpuctl
