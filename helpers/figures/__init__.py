"""Every Plotly figure and every display (tables, notes, sources) of the book; one shared style."""
