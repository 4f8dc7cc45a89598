from memlane.entry import main

main()
