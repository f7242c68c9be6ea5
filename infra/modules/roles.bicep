// Least-privilege role assignments for the app's managed identity, each on the narrowest scope that works.
param principalId string
param hostAccountName string
param dataAccountName string
param acceptedContainerName string
param resultsContainerName string
param poisonContainerName string
param pollQueueName string
param cancelQueueName string
param statusLocalQueueName string
param jobsTableName string
param eventHubNamespaceName string
param acceptedHubName string
param statusHubName string
param keyVaultName string
param appInsightsName string

var roles = {
  blobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  blobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  blobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1'
  blobDelegator: 'db58b8e5-c6ad-4a2a-8342-4190687cbf4a'
  queueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  tableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  eventHubsDataReceiver: 'a638d3c7-ab3a-418d-83e6-5f17a39d4fde'
  eventHubsDataSender: '2b629674-e913-4c01-ae53-ef4638d8f975'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

resource hostAccount 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: hostAccountName
}

resource dataAccount 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: dataAccountName

  resource blobs 'blobServices' existing = {
    name: 'default'
    resource accepted 'containers' existing = { name: acceptedContainerName }
    resource results 'containers' existing = { name: resultsContainerName }
    resource poison 'containers' existing = { name: poisonContainerName }
  }
  resource queues 'queueServices' existing = {
    name: 'default'
    resource poll 'queues' existing = { name: pollQueueName }
    resource pollPoison 'queues' existing = { name: '${pollQueueName}-poison' }
    resource cancel 'queues' existing = { name: cancelQueueName }
    resource cancelPoison 'queues' existing = { name: '${cancelQueueName}-poison' }
    resource statusLocal 'queues' existing = { name: statusLocalQueueName }
  }
  resource tables 'tableServices' existing = {
    name: 'default'
    resource jobs 'tables' existing = { name: jobsTableName }
  }
}

resource eventHubNamespace 'Microsoft.EventHub/namespaces@2024-01-01' existing = {
  name: eventHubNamespaceName
  resource accepted 'eventhubs' existing = { name: acceptedHubName }
  resource status 'eventhubs' existing = { name: statusHubName }
}

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: keyVaultName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

// The Functions host's own storage (AzureWebJobsStorage: host locks, timer leases, Event Hub checkpoints) and the
// Flex Consumption deployment package: the host creates its containers at run time, so this one is account-wide,
// on the host account only (which holds no application data).
resource hostBlobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostAccount.id, principalId, roles.blobDataOwner)
  scope: hostAccount
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataOwner)
  }
}

// Accepted files are only read (and shared with DOCSAI through a user-delegation SAS).
resource acceptedReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::blobs::accepted.id, principalId, roles.blobDataReader)
  scope: dataAccount::blobs::accepted
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataReader)
  }
}

// A user-delegation key (for the DOCSAI file link) can only be granted at account scope; it signs nothing the
// identity cannot already read.
resource delegator 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount.id, principalId, roles.blobDelegator)
  scope: dataAccount
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDelegator)
  }
}

resource resultsWriter 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::blobs::results.id, principalId, roles.blobDataContributor)
  scope: dataAccount::blobs::results
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataContributor)
  }
}

resource poisonWriter 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::blobs::poison.id, principalId, roles.blobDataContributor)
  scope: dataAccount::blobs::poison
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataContributor)
  }
}

resource pollQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::queues::poll.id, principalId, roles.queueDataContributor)
  scope: dataAccount::queues::poll
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource pollPoisonContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::queues::pollPoison.id, principalId, roles.queueDataContributor)
  scope: dataAccount::queues::pollPoison
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource cancelQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::queues::cancel.id, principalId, roles.queueDataContributor)
  scope: dataAccount::queues::cancel
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource cancelPoisonContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::queues::cancelPoison.id, principalId, roles.queueDataContributor)
  scope: dataAccount::queues::cancelPoison
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource statusLocalContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::queues::statusLocal.id, principalId, roles.queueDataContributor)
  scope: dataAccount::queues::statusLocal
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource jobsTableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount::tables::jobs.id, principalId, roles.tableDataContributor)
  scope: dataAccount::tables::jobs
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.tableDataContributor)
  }
}

resource acceptedHubReceiver 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(eventHubNamespace::accepted.id, principalId, roles.eventHubsDataReceiver)
  scope: eventHubNamespace::accepted
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.eventHubsDataReceiver)
  }
}

resource statusHubSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(eventHubNamespace::status.id, principalId, roles.eventHubsDataSender)
  scope: eventHubNamespace::status
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.eventHubsDataSender)
  }
}

resource secretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, principalId, roles.keyVaultSecretsUser)
  scope: vault
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser)
  }
}

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, principalId, roles.monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
  }
}
