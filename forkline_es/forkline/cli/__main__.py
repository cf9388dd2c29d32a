from forkline_es.forkline.cli import main

main()
