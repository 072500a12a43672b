class ModelNew(ModelNew)
    pass
