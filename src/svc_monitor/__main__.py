from svc_monitor.cli import main

main()
