"""The PySpark Python Data Source for the `kraft` format.

Will own streaming and batch reads and writes, talking to the cluster through `net` only.
Not built yet.
"""
