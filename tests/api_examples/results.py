OTHER = {"result_row": "helper", "result_frame": "helper", "check_result": "helper"}
